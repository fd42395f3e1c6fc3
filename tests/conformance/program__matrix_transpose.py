m = [[1, 2, 3], [4, 5, 6]]
[list(row) for row in zip(*m)]
