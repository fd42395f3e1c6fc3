s = {1, 2, 3}
t = s.copy()
x = s.pop()
s.clear()
[x, s, t, len(t)]
