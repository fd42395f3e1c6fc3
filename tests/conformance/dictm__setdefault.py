d = {}
a = d.setdefault('a', [])
a.append(1)
b = d.setdefault('a', 'ignored')
c = d.setdefault('n')
[d, b, c]
