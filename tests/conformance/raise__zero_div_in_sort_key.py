sorted([1, 0, 2], key=lambda v: 1 / v)
