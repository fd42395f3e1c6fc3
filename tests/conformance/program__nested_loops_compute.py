grid = [[(i * j) % 7 for j in range(30)] for i in range(30)]
counts = {}
for row in grid:
    for v in row:
        counts[v] = counts.get(v, 0) + 1
[counts, sum(sum(r) for r in grid)]
