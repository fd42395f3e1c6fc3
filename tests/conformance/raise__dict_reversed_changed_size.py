d = {"a": 1, "b": 2}
for k in reversed(d):
    d[k + "x"] = 3
