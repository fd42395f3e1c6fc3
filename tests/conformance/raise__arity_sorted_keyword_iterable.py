rows = [3, 1]
out = sorted(iterable=rows)
