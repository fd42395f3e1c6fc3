a = set([(3, 0), 165, 100000000000000000000, 78, 11, 185, 2305843009213693951, 127])
b = {(2, 4), 100000000000000000000, 2.5, 23.5, 99, 176}
out = []
if (4, 5) in a:
    out.append(len(a))
out.append(list(a))
a.discard(196)
out.append(list(a))
if a:
    out.append(a.pop())
out.append(list(a))
a.intersection_update(b)
out.append(list(a))
a.update([12.5, 146])
out.append(list(a))
a.difference_update(b)
out.append(list(a))
a.intersection_update([97, 0], a)
out.append(list(a))
a.add(55)
out.append(list(a))
a = a.union(b)
out.append(list(a))
out
