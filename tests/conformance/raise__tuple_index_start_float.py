t = (1, 2)
t.index(2, 1.0)
