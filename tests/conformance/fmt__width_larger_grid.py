vals = [7, -7, 7.25, -7.25, 'ab']
[f'{v:{a}{w}}' for v in vals for a in ['', '<', '>', '^'] for w in [1, 6]]
