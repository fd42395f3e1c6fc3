pairs = {'a': 1, 'b': 2}
[f'{k}={v}' for k, v in pairs.items()]
