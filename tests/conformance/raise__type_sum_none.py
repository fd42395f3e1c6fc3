sum([1, None])
