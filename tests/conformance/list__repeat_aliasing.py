grid = [[0] * 2] * 2
grid[0][0] = 5
grid
