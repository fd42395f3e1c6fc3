d = {'x': 1.5, 'y': 2, 'z': -1}
total = 0
for v in d.values():
    total += v
[total, sum(v for k, v in d.items() if k != 'z'), max(d.items(), key=lambda kv: kv[1])]
