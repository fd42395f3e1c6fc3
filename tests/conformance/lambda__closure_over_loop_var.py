rows = [(1, 'b', 9), (2, 'a', 8), (0, 'c', 7)]
out = []
for k in range(3):
    out.append([r[0] for r in sorted(rows, key=lambda r: r[k])])
out
