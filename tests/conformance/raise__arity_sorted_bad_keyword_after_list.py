rows = [3, 1]
out = sorted(rows, reversed=True)
