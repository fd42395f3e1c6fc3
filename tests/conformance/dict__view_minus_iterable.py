seen = {"a.py": 1, "b.py": 2, "c.py": 3}
wanted = ["b.py", "d.py"]
missing = sorted(seen.keys() - wanted)
extra = sorted(wanted - seen.keys())
pairs = sorted(seen.items() - [("a.py", 1)])
left = seen.keys()
left -= ("c.py",)
print(missing, extra, pairs, sorted(left))
sorted(seen.keys() - (k for k in wanted)), sorted(seen.keys() - seen.values())
