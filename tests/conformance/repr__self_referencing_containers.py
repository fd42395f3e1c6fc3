# A container that holds itself prints as [...] / {...} at the inner level,
# in repr, str, print and f-strings alike.
x = [1]
x.append(x)
d = {}
d["a"] = d
d["b"] = [d, x]
print(x, d)
(repr(x), str(d), f"{x!r:>12}", len(x[1][1][1]))
