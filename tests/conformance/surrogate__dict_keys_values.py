d = {}
for i, c in enumerate(['\ud800', '\udc00', '\ud800', 'a']):
    d[c] = d.get(c, 0) + i
[d, list(d.keys()), sorted(d), sorted(d.items()), {k: v for k, v in d.items() if k < 'b'}]
