print('hello')
print(1, 2, 3)
print()
print([1, 'a'], (2,), {'k': None})
