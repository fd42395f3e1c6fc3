xs = [2, 1]
xs.sort(True)
