xs = [1]
[1 in xs in [[1]], 1 in xs in [[2]], 1 < 2 in [True, 2], None is None is not False, 'a' in 'abc' != False]
