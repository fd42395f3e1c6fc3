reversed(x for x in [1])
