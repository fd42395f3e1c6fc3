print("a", "b", file=None, flush=True)
d = dict(key=len)
print(d, len(d))
print(sort_by(items=[{"n": 2}, {"n": 1}], key="n"), sort_by([[2], [1]], 0, True))
d
