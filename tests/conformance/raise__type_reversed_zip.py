reversed(zip([1], [2]))
