d = {0.0: 'a', -0.0: 'b', 1: 'c', 1.0: 'd'}
nan = float('nan')
e = {nan: 1}
e[float('nan')] = 2
[d, len(e), e[nan]]
