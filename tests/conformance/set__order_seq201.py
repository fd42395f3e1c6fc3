a = set([174, 2305843009213693952])
b = {-30, 149, (4, 2), 173, -32, 183, 190, -16, -10000000000000000000, 158, 137, 85, 147, 21.5}
out = []
a.update([196, 72])
out.append(list(a))
out.append(list(a.intersection([79, 1.5])))
out.append(list(a))
out.append(list(a.intersection(b)))
out.append(list(a))
a.difference_update([50, 21])
out.append(list(a))
a = a.copy()
out.append(list(a))
if 41 in a:
    out.append(len(a))
out.append(list(a))
a = a.copy()
out.append(list(a))
a = a.union([-29, 14.5], b)
out.append(list(a))
a = a.difference([166])
out.append(list(a))
out
