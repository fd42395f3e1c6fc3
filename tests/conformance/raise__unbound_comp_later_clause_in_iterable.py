# The second clause's iterable reads x, which the third clause binds: an
# unbound local of the comprehension, whatever the module's x holds.
x = 10
data = [[1, 2], [3]]
print('before')
r = [(k, j) for k in [1, 2, 3] for j in range(x % 4) for x in data]
