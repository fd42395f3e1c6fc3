d = {"a": 1}
for k in (
        d):
    d[k + "x"] = 1
