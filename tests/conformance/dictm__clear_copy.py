d = {'a': [1]}
e = d.copy()
e['b'] = 2
e['a'].append(2)
f = d
d.clear()
[d, e, f]
