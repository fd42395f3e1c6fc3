a = set([180, 89, 135, 2305843009213693951, (2, 4)])
b = {21, 23.5, -22, -34, 35, 113, 156, -10000000000000000000, 5, 79, 158, (0, 0), 133}
out = []
a.add(-5)
out.append(list(a))
a.add(-2)
out.append(list(a))
if len(a) > 25:
    a.clear()
out.append(list(a))
a = b - a
out.append(list(a))
if 4611686018427387909 in a:
    out.append(len(a))
out.append(list(a))
a = set(a)
out.append(list(a))
a = a.union([-2, 151], b)
out.append(list(a))
a.difference_update([99, -34])
out.append(list(a))
a.update([109, 30.5])
out.append(list(a))
a.difference_update([164, 83])
out.append(list(a))
out
