xs = ['a', 'b', 'c']
print(*xs)
print(*xs, sep=', ')
print(*range(3), *'xy')
