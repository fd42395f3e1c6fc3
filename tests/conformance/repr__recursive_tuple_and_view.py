t = (1, [2])
t[1].append(t)
d = {"k": [1]}
d["k"].append(d)
print(t, [t])
print(d.items(), d.values())
e = {}
e["v"] = e.values()
print(e)
str(t)
