d = {'a': 1, 'b': 2, 'a': 3}
e = {1: 'x', 1.0: 'y', True: 'z'}
[d, list(d), e]
