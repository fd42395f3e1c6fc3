xs = [3, 1, 2]
xs.sort(None, False, 1)
