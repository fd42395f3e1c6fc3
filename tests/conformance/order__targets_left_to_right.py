xs = [0, 0, 0]
i = 0
xs[i], i = 'x', 2
ys = [0, 0, 0]
j = 0
j, ys[j] = 2, 'y'
[xs, i, ys, j]
