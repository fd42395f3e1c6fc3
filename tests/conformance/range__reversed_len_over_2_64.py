h = int('18446744073709551616') + 5
out = []
for x in reversed(range(h)):
    out.append(x)
    if len(out) == 2:
        break
out
