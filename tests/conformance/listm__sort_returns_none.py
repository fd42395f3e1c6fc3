xs = [2, 1]
r = xs.sort()
[r, xs]
