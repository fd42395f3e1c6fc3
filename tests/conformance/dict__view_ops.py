d = {'a': 1, 'b': 2}
[sorted(d.keys()), sorted(d.values(), reverse=True), ('a', 1) in d.items(), ('a', 2) in d.items(), list(reversed(d.keys()))]
