vals = [0, 5, 999, 1000, -1000, 123456789, 1234.5, -0.001, 1e6]
[f'{v:,}' for v in vals] + [f'{v:_}' for v in vals] + [f'{v:,.1f}' for v in vals]
