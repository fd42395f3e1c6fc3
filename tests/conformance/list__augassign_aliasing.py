a = b = []
a += [1]
[a, b, a is b]
