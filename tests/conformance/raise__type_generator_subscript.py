g = (x for x in [1])
g[0]
