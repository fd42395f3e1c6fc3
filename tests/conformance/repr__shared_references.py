a = [1]
b = [a, a]
a.append(2)
[b, b[0] is b[1]]
