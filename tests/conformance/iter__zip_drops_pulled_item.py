g = (x for x in range(5))
pairs = list(zip(g, [10]))
[pairs, list(g)]
