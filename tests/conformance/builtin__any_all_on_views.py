d = {'a': 0, 'b': 1}
[any(d.values()), all(d.values()), all(d), any({}), all(k.isalpha() for k in d)]
