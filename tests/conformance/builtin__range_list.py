[list(range(5)), list(range(2, 8, 3)), list(range(10, 0, -3)), list(range(0, -5, -1)), list(range(3, 3)), list(range(-2))]
