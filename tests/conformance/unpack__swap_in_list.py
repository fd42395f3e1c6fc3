xs = [1, 2, 3]
xs[0], xs[-1] = xs[-1], xs[0]
xs
