d = {'a': 1, 'b': 2}
x = d.pop('a')
y = d.pop('zz', 'dflt')
z = d.pop('b', None)
[x, y, z, d]
