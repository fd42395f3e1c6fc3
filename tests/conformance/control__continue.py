out = []
for i in range(10):
    if i % 3:
        continue
    out.append(i)
out
