d = {'a': 1, 'b': 2}
d.update({'a': 3, 'c': 4})
d['b'] = 5
[list(d), list(d.values())]
