[min(x % 7 for x in range(3, 30)), max((len(w), w) for w in ['a', 'bb', 'cc']), sum(x for x in range(100) if x % 7 == 0), sorted((x % 3 for x in range(9)), reverse=True)]
