d = {'a': 1, 'b': 2, 'c': 3}
d.pop('a')
d['a'] = 9
[d, list(d)]
