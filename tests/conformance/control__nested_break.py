pairs = []
for i in range(4):
    for j in range(4):
        if j > i:
            break
        pairs.append((i, j))
pairs
