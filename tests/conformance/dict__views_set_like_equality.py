d = {'a': 1, 'b': 2}
[d.keys() == {'a', 'b'}, d.items() == {('a', 1), ('b', 2)}, d.values() == d.values(), sorted(d.keys() - {'a'}), list(d.keys()) == ['a', 'b']]
