d = {'a': 1}
v = d.values()
e = {v: 'x'}
[e[v], len({d.values(), d.values()}), v in {v}, d.keys() == d.keys(), d.items() == d.items()]
