matrix = [[1, 2], [3], [], [4, 5, 6]]
[v for row in matrix for v in row]
