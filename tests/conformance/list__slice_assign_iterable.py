xs = [1, 2, 3]
xs[1:2] = 'xy'
ys = [1, 2, 3, 4]
ys[-2:] = range(3)
zs = [1, 2, 3]
zs[10:] = [4]
[xs, ys, zs]
