xs = [1, 2, 3, 2, 1]
xs.remove(2)
xs.remove(1)
xs
