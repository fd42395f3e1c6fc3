# dict(d) of a dict with a deleted entry is built in a table presized for
# it (CPython's dict_merge), larger than growing one would give, so a loop
# that renames keys sees its renamed keys again and stops at the fourth.
d = {0: 0, 1: 0, 2: 0, (3,): 0}
d.pop((3,))
d = dict(d)
seen = []
for k in d:
    seen.append(k)
    if len(seen) > 20:
        break
    d[str(k)] = d.pop(k)
    print(len(d), list(d))

