s = set()
s.add((1, 2))
s.add((1, 2))
d = {(0, 0): 'origin'}
[len(s), (1, 2) in s, d[(0, 0)], d.get((0, 1), 'none')]
