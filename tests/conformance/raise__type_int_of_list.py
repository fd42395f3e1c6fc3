int([1])
