g = (x for x in range(10))
hit = 4 in g
[hit, list(g)]
