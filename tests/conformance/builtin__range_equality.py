[range(0) == range(2, 2), range(0, 3) == range(3), range(1, 10, 2) == range(1, 11, 2), list(range(1, 2, 5))]
