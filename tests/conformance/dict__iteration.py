d = {'b': 1, 'a': 2}
out = []
for k in d:
    out.append(k)
for k, v in d.items():
    out.append(k + str(v))
out
