s = '\ud800'
u = s * 3
v = s + 'a' + s
w = 'b'
w += s
[u, len(u), v, w, len(v), s * 0, u.count(s)]
