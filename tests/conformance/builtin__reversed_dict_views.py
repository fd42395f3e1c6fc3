d = {'a': 1, 'b': 2, 'c': 3}
[list(reversed(d.items())), list(reversed(d.values())), list(reversed(d.keys())), list(reversed(range(1, 10, 3)))]
