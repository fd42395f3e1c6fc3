d = {'a': 1}
d.values() < d.values()
