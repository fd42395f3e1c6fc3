sum(1 / (3 - x) for x in range(5))
