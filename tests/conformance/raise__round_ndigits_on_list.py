round([1], [2])
