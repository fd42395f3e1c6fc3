sorted([2, 1], None)
