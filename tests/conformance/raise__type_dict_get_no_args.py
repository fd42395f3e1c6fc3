d = {}
d.get()
