sorted([3, 'a', 1])
