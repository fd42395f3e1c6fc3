t = 1, 2, 3
a, b, c = t
x, y = y, x = 5, 6
[t, a, b, c, x, y]
