first, *rest = [1, 2, 3, 4]
*init, last = 'abc'
a, *mid, z = range(5)
p, *q = [1]
[first, rest, init, last, a, mid, z, p, q]
