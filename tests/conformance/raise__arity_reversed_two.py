r = reversed([1], [2])
