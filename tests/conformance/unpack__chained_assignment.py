a = b = c = 0
xs = ys = [1]
xs.append(2)
[a, b, c, xs, ys]
