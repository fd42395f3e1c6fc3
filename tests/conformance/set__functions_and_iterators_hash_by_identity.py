d = dict(key=len)
f = d["key"]
g = (x for x in [1, 2])
seen = {f, g, f, g}
print(len(seen), f in seen, g in seen, {g: "gen"}[g], str(f))
d
