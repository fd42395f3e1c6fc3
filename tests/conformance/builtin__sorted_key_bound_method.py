counts = {'a': 3, 'b': 1, 'c': 2}
[sorted(counts, key=counts.get), sorted(counts, key=counts.get, reverse=True), max(counts, key=counts.get), min(counts, key=counts.get)]
