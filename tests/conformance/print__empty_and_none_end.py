print('', end='')
print('x', '', 'y')
print(None)
