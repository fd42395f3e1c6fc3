len(x for x in [1])
