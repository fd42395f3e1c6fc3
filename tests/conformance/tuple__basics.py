t = (1, 'a', 2.5)
[t, (), (1,), t[1], t[-1], t[::-1], t + (3,), t * 2, len(t), tuple('ab'), tuple([1, 2]), tuple(range(2))]
