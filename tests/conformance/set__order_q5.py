a = set([585, 29.25, 529, 2821])
b = {2641, 2682, 601, 2322, 214, -2, 881, (0, -5), 2260, 720, 1221, 2305843009213693952, 9.25, 2557, (5, -5), 18.25, (4, -2), 2471, 1798, 25, 1389, 8.25, 2305843009213693951, 1980, -176, 7.25, 2462, (5, -5), 610, 1018, 1342, 786}
out = []
a = b.union(a)
out.append(list(a))
for x in range(22, 1354, 3):
    a.discard(x)
out.append(list(a))
a.intersection_update([2529, 1761], a)
out.append(list(a))
a.update([14.25, 182], b)
out.append(list(a))
a.intersection_update(b)
out.append(list(a))
a.discard(2275)
out.append(list(a))
a = a.difference(b)
out.append(list(a))
out
