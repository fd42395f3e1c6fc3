d = {}
d.setdefault([1], 0)
