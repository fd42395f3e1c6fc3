sorted({(x % 2, x % 3) for x in range(10)})
