r = range(0, 20, 3)
[r[0], r[-1], r[2], r[1:4], r[::-1], r[::2], 9 in r, 10 in r, r.index(9), r.count(6), len(r)]
