seen = []
r = all(seen.append(x) or x < 2 for x in range(10))
[r, seen]
