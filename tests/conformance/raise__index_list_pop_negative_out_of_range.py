xs = [1, 2]
xs.pop(-3)
