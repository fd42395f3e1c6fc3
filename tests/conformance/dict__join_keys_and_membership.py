d = {'x': 1, 'y': 2}
[', '.join(d), 'x' in d.keys(), 1 in d.values(), ('y', 2) in d.items(), len(d.items())]
