words = ['apple', 'avocado', 'banana', 'blueberry', 'cherry']
g = {}
for w in words:
    g.setdefault(w[0], []).append(w)
[g, {k: len(v) for k, v in g.items()}]
