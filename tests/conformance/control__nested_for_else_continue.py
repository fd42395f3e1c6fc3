out = []
for i in range(2, 12):
    for d in range(2, i):
        if i % d == 0:
            break
    else:
        out.append(i)
        continue
    out.append(-i)
out
