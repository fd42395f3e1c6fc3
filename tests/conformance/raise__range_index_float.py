range(0, 20, 3).index(9.5)
