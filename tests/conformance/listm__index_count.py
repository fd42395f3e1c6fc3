xs = [1, 2, 3, 2, 1, 2.0, True]
[xs.index(2), xs.index(2, 2), xs.index(1, -3), xs.index(3, 0, 3), xs.count(2), xs.count(1), xs.count(9), [].count(1)]
