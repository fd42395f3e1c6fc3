[list(range(10, -10, -7)), [i for i in range(3, 0, -1)], sum(range(-5, 6)), list(range(0, 1, 10)), 5 in range(0, 10, 5)]
