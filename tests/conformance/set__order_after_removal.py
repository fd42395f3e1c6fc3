a = set([1, 9])
a.discard(1)
a.add(17)
list(a)
