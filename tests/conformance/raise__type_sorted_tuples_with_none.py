sorted([(1, None), (1, 2)])
