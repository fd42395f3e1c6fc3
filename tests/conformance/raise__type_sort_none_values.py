vals = [3, None, 1]
vals.sort()
