d = {}
[d.keys(), d.values(), d.items()]
