xs = [1, 2, 3]
i = 0
xs[i] += xs.pop()
xs
