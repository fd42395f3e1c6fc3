xs = [1, 2, 3]
i = 0
i, xs[i] = 1, 'x'
xs
