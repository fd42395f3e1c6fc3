len(zip([1], [2]))
