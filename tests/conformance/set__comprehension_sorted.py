sorted({x % 5 for x in range(20)})
