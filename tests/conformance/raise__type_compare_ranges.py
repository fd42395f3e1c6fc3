range(2) < range(3)
