print('start')
print('a', 1 / 0)
