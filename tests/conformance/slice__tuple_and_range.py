t = tuple(range(10))
r = range(10, 30, 2)
[t[2:8:3], t[::-4], r[::-1], r[2:5], r[-3:], list(r[1::4])]
