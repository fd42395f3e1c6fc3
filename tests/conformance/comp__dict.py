words = ['apple', 'bob', 'cat', 'apple']
[{w: len(w) for w in words}, {i: i * i for i in range(4) if i}, {v: k for k, v in {'a': 1, 'b': 2}.items()}, {k: 0 for k in 'aba'}]
