xs = [1, [2, 3]]
ys = xs.copy()
ys.append(4)
ys[1].append(5)
zs = xs
xs.clear()
[xs, ys, zs]
