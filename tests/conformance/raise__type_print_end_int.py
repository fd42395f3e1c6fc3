print('a', end=5)
