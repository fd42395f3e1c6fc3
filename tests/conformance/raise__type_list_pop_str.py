xs = [1]
xs.pop('a')
