d = {'a': 1, 'b': 2, 'c': 3}
x = d.popitem()
y = d.popitem()
[x, y, d]
