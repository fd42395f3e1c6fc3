xs = [1, 2, 1]
xs.index(1, None)
