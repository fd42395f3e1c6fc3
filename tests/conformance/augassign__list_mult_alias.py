a = b = [1, 2]
a *= 2
[a, b, a is b]
