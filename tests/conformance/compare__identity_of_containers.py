a = [1]
b = [1]
c = a
[a == b, a is b, a is c, a is not b, None is None, () == ()]
