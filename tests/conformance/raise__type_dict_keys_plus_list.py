d = {'a': 1}
d.keys() + [1]
