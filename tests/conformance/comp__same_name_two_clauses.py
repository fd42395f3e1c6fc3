# A name bound by two clauses is one variable: the second clause's
# iterable reads the first clause's value, and the module's x is untouched.
x = 'outer'
flat = [x for x in [[1, 2], [3], []] for x in x]
nested = [[x for x in range(x)] for x in range(4)]
inner_first_iter = [[y for y in range(k) if k] for k in range(3) for x in 'ab']
print(flat, nested, inner_first_iter)
g = (x for x in ['ab', 'c'] for x in x)
[list(g), x]
