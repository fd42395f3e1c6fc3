n = 1
g = (x + n for x in range(3))
n = 10
list(g)
