n = 10
xs = [n + i for i in range(3)]
xs
