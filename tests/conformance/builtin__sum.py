[sum([1, 2, 3]), sum([]), sum([0.1] * 10), sum(range(101)), sum([1, 2], 10), sum([[1], [2]], []), sum([True, True, False]), sum([1, 2.5]), sum((x for x in range(4)), start=1)]
