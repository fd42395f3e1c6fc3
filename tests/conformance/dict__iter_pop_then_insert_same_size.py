# A dict iterator follows entry positions: after a pop and an insert (same
# size) it goes on, yielding the new key (CPython raises only when more
# keys turn up than the dict held when iteration started).
d = {1: 2, 2: 3}
keys = (k for k in d)
d.pop(1)
d[5] = 1
list(keys)
