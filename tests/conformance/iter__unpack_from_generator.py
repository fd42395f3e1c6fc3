a, b, c = (x * x for x in range(3))
first, *rest = (c for c in 'hello')
[a, b, c, first, rest]
