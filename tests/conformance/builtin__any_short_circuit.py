seen = []
r = any(seen.append(x) or x > 1 for x in range(10))
[r, seen]
