# dict.copy() of a dict with few deleted entries clones its table, holes
# included, so iterating the copy while renaming keys behaves as it would
# on the original.
d = {i: i for i in range(12)}
d.pop(0)
d.pop(1)
d = d.copy()
seen = []
for k, v in d.items():
    seen.append(k)
    d[str(k)] = d.pop(k)
    print(len(d), list(d)[-3:])
(seen, d)
