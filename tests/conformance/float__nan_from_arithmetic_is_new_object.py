# Every arithmetic result is a new float object, so NaNs computed separately
# are different objects: containers compare them with ==, which is False.
# The same object is still identical to itself.
inf = float("inf")
a = inf - inf
b = a * 1
c = -a
d = abs(a)
e = round(a, 2)
f = sum([a])
keys = {inf * 0: "x", inf * 0: "y"}
[[a] == [a], [a] == [b], a in [b], [b, c, d, e, f].count(a), [a, +a, float(a), min(a, 1.0)].count(a), len(keys), len({a, b, a})]
