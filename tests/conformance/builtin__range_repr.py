[range(5), range(1, 5), range(1, 10, 2), range(5, 0, -1), range(0), range(-3, 3)]
