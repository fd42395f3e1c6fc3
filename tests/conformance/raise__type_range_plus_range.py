range(3) + range(3)
