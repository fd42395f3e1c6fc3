name = 'x'
n = [1][0]
msg = f'{name}: {n / 0}'
