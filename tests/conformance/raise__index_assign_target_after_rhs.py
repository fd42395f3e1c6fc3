xs = [0, 1, 2]
xs[xs.pop()] = 'a'
