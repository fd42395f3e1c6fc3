s = set()
s.add(1)
s.add(2)
s.add(1)
s.discard(5)
s.discard(1)
s.add(3)
s.remove(2)
s
