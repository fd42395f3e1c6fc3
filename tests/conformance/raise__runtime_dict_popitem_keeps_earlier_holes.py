# popitem() drops only the popped entry and what follows it; the hole left
# by an earlier pop stays, so the next insert lands behind the iterator.
d = {0: 0}.copy()
for v in d.values():
    d.pop(v)
    d[v] = 1
    d.popitem()
    d[32] = 2
