data = [('a', 1), ('b', 2), ('a', 3), ('c', 4), ('b', 5)]
groups = {}
for k, v in data:
    groups.setdefault(k, []).append(v)
{k: sum(vs) for k, vs in groups.items()}
