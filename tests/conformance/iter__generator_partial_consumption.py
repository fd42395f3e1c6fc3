g = (x for x in range(10))
found = any(x > 3 for x in g)
[found, list(g)]
