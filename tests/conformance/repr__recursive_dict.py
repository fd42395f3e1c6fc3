d = {'a': 1}
d['self'] = d
d
