s = {1}
s.add(1.0)
s.add(True)
t = {True, 1}
u = {0.0}
u.update([0, False])
[s, t, u, {1.0, 1}, set([2, 2.0])]
