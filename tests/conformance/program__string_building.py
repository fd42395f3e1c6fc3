s = ''
for i in range(1000):
    s += str(i)
[len(s), s[-10:], s.count('9')]
