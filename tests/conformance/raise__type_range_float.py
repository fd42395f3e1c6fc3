range(1.5)
