d = {"a": 1, "b": 2, "c": 3}
d.pop("b")
d["d"] = 4
print(list(reversed(d)), list(reversed(d.keys())), list(reversed(d.values())), list(reversed(d.items())))
r = reversed(d)
d["a"] = 10
list(r), [k + str(v) for k, v in reversed(d.items())]
