print('a', 'b', sep=1)
