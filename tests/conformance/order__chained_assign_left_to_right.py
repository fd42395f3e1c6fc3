xs = [None, None]
a = xs[0] = xs[1] = 'v'
[a, xs]
