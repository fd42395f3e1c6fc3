[', '.join(w.upper() for w in ['a', 'b']), tuple(x for x in 'ab'), list(x + 1 for x in range(3)), set(x % 2 for x in range(5)), dict((k, k * 2) for k in range(2))]
