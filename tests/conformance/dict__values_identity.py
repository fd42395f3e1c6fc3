d = {'a': 1, 'b': 2}
v = d.values()
[v == v, v != v, d.values() == d.values(), d.values() != d.values(), len({v, v}), v in [v], v in [d.values()], [v].count(v), (v,) == (v,), [v] == [v], {1: v}[1] == v]
