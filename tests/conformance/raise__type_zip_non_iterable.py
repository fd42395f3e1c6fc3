list(zip([1], 2))
