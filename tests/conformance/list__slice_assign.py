xs = list(range(6))
xs[1:3] = ['a', 'b', 'c']
a = list(xs)
xs[:0] = [99]
b = list(xs)
xs[::2] = [0, 0, 0, 0]
c = list(xs)
xs[2:] = []
[a, b, c, xs]
