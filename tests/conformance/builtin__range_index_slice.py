r = range(0, 20, 3)
[r[0], r[-1], r[2], r[1:4], r[::-1], r[::2], 9 in r, 10 in r, -3 in r, len(r), r[-7]]
