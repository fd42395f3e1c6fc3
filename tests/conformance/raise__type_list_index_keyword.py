xs = [1, 2]
xs.index(value=2)
