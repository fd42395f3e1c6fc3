d = {'a': 1}
k = d.keys()
v = d.values()
d['b'] = 2
[k, v, len(k), 'b' in k, 2 in v]
