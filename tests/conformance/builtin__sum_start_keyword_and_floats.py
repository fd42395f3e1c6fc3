[sum([0.5, 0.25], start=1), sum(range(5), 100), sum([[1], [2, 3]], start=[0]), sum(x / 2 for x in range(3))]
