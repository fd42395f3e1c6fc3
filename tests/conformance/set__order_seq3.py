a = set([2305843009213693951, 141, 163, 26.5])
b = {111, -33, -17, 14}
out = []
a = a.difference(b)
out.append(list(a))
a.difference_update(b)
out.append(list(a))
a = b - a
out.append(list(a))
a = b.symmetric_difference(a)
out.append(list(a))
if 2305843009213693952 in a:
    out.append(len(a))
out.append(list(a))
out
