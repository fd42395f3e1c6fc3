d = {1: 'a'}
d.setdefault(1.0, 'b')
d[1.0] = 'c'
e = {}
e[True] = 1
e[1] = 2
f = {1.0: 'x'}
f.update({1: 'y', True: 'z'})
[d, e, f, {**{0: 'a'}, **{False: 'b'}}]
