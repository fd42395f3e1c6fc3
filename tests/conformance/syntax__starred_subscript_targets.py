xs = [0, 0]
xs[0], *rest = [1, 2, 3]
d = {}
*init, d['last'] = 'abc'
[xs, rest, init, d]
