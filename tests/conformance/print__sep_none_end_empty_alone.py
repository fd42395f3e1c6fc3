print('a', None, sep=None)
print(end='')
print('b', end=None)
print('c', 'd', sep='')
