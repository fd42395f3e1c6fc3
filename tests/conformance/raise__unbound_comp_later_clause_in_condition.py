# A name bound by a later `for` clause is a local of the whole
# comprehension: the earlier clause's condition reads that local, unbound,
# not the module's x (CPython: UnboundLocalError).
x = [1, 2]
r = [y for y in x if x for x in range(3)]
