m = [[1, 2], [3, 0]]
[[10 // v for v in row] for row in m]
