t = (1, 2, 2, 3, 2)
[t.count(2), t.count(9), t.index(2), t.index(2, 2), t.index(3, 0, 4), t.index(2, -1)]
