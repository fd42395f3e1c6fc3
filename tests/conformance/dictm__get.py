d = {'a': 1, 'b': None}
[d.get('a'), d.get('z'), d.get('z', 0), d.get('b', 5), d.get(1.0), {1: 'one'}.get(True)]
