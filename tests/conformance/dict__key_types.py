d = {1: 'int', 'a': 'str', (1, 2): 'tuple', None: 'none', 2.5: 'float', True: 'bool?'}
[d, d[1], d[(1, 2)], len(d)]
