out = []
for a in [7, -7, 0, 13, -13]:
    for b in [3, -3, 5]:
        out.append(a == (a // b) * b + a % b)
all(out)
