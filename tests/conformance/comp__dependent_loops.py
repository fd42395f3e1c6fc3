[(i, j) for i in range(4) for j in range(i) if (i + j) % 2]
