# The same in a generator expression: raised when the generator runs.
x = 3
g = (x for i in range(2) for j in range(x) for x in 'ab')
print('made')
list(g)
