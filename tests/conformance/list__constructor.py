[list(), list('abc'), list((1, 2)), list(range(3)), list({'a': 1, 'b': 2}), list({'a': 1}.items()), list([1, 2])]
