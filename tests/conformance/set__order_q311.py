a = set([2274, -167, 4611686018427387909, 2305843009213693952, (1, 1), -23, 15.25, 1894, -182, 1177, 2601, 2944, 757, 138, 1053, 2305843009213693952, 1301, 2.25, 1123, 2080, 16.25, 8.25, 98, 8.25, 1866, 1560, 686, 2890, 10.25, 176, 190])
b = {-81, 2695, 266, 798, 1722, 439, 2891, 1033, 2875, 1914, 760, 100000000000000000000, 4611686018427387909, 25.25, 2.25, 100000000000000000000, 531, 1120, -2, 1655, 1903, 951, -245, 142, 969, 2300, 4611686018427387909, -10000000000000000000, -10000000000000000000, 2305843009213693951}
out = []
a = a.difference([3.25])
out.append(list(a))
a = a.difference(b)
out.append(list(a))
a.discard((0, 3))
out.append(list(a))
for x in range(-181, 503, 3):
    a.discard(x)
out.append(list(a))
a = a.difference(b)
out.append(list(a))
a = set(a)
out.append(list(a))
out.append(list(a.intersection(b)))
out.append(list(a))
a = a - b
out.append(list(a))
a = a.difference(b, [1, 2])
out.append(list(a))
a.intersection_update([829, 1331], a)
out.append(list(a))
out.append(list(a.intersection([2875, 100000000000000000000])))
out.append(list(a))
out.append(list(a.intersection([2636, 30.25])))
out.append(list(a))
out
