d = {1: 'int'}
d[1.0] = 'float'
d[True] = 'bool'
s = [1, 1.0, True]
[d, len(d), s.count(True), s.index(1.0), 1.0 in {1: 0}]
