xs = ['a', 'b', 'c']
[list(enumerate(reversed(xs))), list(zip(xs, reversed(xs))), list(reversed(list(enumerate(xs))))]
