d = {'a': [1], 'b': (2,)}
[d.items(), d.keys(), d.values(), str(d.keys())]
