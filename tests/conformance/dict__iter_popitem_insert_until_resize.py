# popitem() frees no insertion room (as CPython's dk_usable), so repeated
# popitem-then-insert inside a loop resizes the table when CPython's
# would, and the iterator then continues from the same position.
d = {}
for i in range(14):
    d[i] = i
for i in range(3):
    d.pop(i)
seen = []
for k in d:
    seen.append(k)
    if len(seen) > 40:
        break
    d.popitem()
    d[k + 200] = 2
(seen, d)
