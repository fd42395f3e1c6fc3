d = {'a': 1, 'b': 2, 'c': 3}
d.pop('b')
d['b'] = 20
[d.pop('zz', None), list(d.items())]
