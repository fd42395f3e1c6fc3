[dict((str(i), i) for i in range(3)), sorted(set(c.lower() for c in 'AbBa')), tuple(x for x in [])]
