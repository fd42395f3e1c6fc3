d = {'a': 1, 'b': 2}
[1 in [1, 2], 3 in (1, 2), 'a' in d, 1 in d, 'ell' in 'hello', '' in 'abc', 2 in {1, 2}, 'x' not in 'abc', 1 in d.values(), ('a', 1) in d.items()]
