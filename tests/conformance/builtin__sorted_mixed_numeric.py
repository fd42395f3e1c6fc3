sorted([3, 1.5, True, -2, 0.0, 10])
