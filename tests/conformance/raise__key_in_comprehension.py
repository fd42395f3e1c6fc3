d = {'a': 1}
[d[k] for k in ['a', 'b']]
