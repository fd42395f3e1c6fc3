[list(reversed([1, 2, 3])), list(reversed('abc')), list(reversed((1,))), list(reversed(range(4))), list(reversed([])), list(reversed({'a': 1, 'b': 2}))]
