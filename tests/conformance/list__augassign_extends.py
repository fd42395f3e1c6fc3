xs = [1]
ys = xs
xs += [2, 3]
xs += 'ab'
xs += (4,)
[xs, ys, xs is ys]
