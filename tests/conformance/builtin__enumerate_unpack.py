out = []
for i, (a, b) in enumerate([(1, 2), (3, 4)]):
    out.append(i + a * b)
out
