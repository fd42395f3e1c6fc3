d = {'a': 1, 'b': 2}
for k in d:
    d.pop(k)
    d[k + 'x'] = 1
