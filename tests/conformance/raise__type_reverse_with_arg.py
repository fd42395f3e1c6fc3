xs = [1, 2]
xs.reverse(1)
