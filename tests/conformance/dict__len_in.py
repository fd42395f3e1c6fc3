d = {'a': 1, 'b': 2}
[len(d), 'a' in d, 1 in d, 'a' not in d, len({})]
