out = []
for a, (b, *c) in [(1, (2, 3, 4)), (5, (6,))]:
    out.append([a, b, c])
out
