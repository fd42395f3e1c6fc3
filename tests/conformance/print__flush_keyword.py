print('a', flush=True)
print('b', 'c', sep='+', end='\n', flush=False)
