d = {'x': 1, 'y': 2}
[list(d.keys()), list(d.values()), list(d.items()), d.keys(), d.values(), d.items()]
