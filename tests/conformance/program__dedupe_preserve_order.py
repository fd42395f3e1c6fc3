seen = set()
out = []
for x in [3, 1, 3, 2, 1, 4]:
    if x not in seen:
        seen.add(x)
        out.append(x)
out
