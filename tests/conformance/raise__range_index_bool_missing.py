range(0, 20, 3).index(True)
