(1, 2).index(3)
