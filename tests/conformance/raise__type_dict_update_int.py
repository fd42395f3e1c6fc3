d = {}
d.update(1)
