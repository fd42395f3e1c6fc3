xs = [1, 2, 3]
xs.reverse()
ys = []
ys.reverse()
[xs, ys, xs.reverse(), xs]
