a = set([(2, 2), 122, 164, -10000000000000000000, 60, (0, 1), 89, 167, 13, -3, 126, -11, 168, 2305843009213693951, (1, 4), 4611686018427387909, 193, 134, -9])
b = {135, 99, 2, 106, 12, 7.5, 11, 172, 120, -26, 15, 11.5, 8, 28, -28, 181, 122, (0, 5), 0.5}
out = []
a.update(b)
out.append(list(a))
out.append(list(a.intersection([146, 53])))
out.append(list(a))
a = a.difference([34])
out.append(list(a))
a = a.union(b)
out.append(list(a))
if 12.5 in a:
    out.append(len(a))
out.append(list(a))
a = a.symmetric_difference(b)
out.append(list(a))
a = a - b
out.append(list(a))
out
