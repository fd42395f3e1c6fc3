rows = [1, "a", None]
out = sorted(rows, key=lambda v: v + 1, reverse=True)
