xs = [1, 2, 3]
xs.remove(2)
xs.index(2)
