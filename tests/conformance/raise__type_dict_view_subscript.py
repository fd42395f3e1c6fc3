d = {'a': 1}
d.keys()[0]
