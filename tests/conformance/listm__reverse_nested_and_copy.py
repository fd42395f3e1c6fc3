xs = [[1, 2], [3]]
ys = xs.copy()
xs.reverse()
xs[0].reverse()
[xs, ys]
