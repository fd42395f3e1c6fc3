xs = [1]
xs.insert(0, 1, 2)
