(k1, v1), (k2, v2) = {'a': 1, 'b': 2}.items()
x, y, z = 'xyz'
[k1, v1, k2, v2, x, y, z]
