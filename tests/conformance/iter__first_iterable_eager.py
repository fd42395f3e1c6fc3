xs = [1, 2]
g = (x for x in xs)
xs = [9, 9, 9]
list(g)
