s = set()
s.add({})
