tuple(5)
