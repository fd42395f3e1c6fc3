a = set([281, 321, 784, -2, 1042, 821, 1982, (5, 5), -260, (2, 2), 980, 2923, 2643, 2911, 2570, 1617, 98, 330])
b = {2697, 722, 2956, 1421, 13.25, 2385, 6.25, 1206, 2684, -262, 5.25, 895, (2, -1), 1119, 337}
out = []
for x in range(-177, 2867, 3):
    a.discard(x)
out.append(list(a))
a.discard(2815)
out.append(list(a))
a = set(a)
out.append(list(a))
a = b - a
out.append(list(a))
a.update(b)
out.append(list(a))
if a:
    out.append(a.pop())
if a:
    out.append(a.pop())
out.append(list(a))
if a:
    out.append(a.pop())
if a:
    out.append(a.pop())
out.append(list(a))
a = a.union(b)
out.append(list(a))
a = a.union([28.25, 2670], b)
out.append(list(a))
a = a.difference(b, [1, 2])
out.append(list(a))
if a:
    out.append(a.pop())
if a:
    out.append(a.pop())
out.append(list(a))
a = b.symmetric_difference(a)
out.append(list(a))
for x in range(16, 156, 2):
    a.add(x)
out.append(list(a))
a.add(13.25)
out.append(list(a))
out
