s = {1, 2, 3}
s.discard(2)
s.discard(2)
s.remove(3)
[s, len(s), 3 in s]
