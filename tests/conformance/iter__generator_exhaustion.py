g = (x * 2 for x in range(3))
a = list(g)
b = list(g)
[a, b]
