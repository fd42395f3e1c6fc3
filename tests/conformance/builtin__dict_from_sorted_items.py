d = {'b': 2, 'c': 3, 'a': 1}
[dict(sorted(d.items())), dict(sorted(d.items(), key=lambda kv: -kv[1])), list(reversed(sorted(d)))]
