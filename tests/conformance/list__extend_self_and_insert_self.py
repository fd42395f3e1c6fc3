xs = [1, 2]
xs.extend(xs)
ys = [1]
ys.insert(0, ys.copy())
[xs, ys]
