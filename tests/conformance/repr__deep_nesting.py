x = []
for i in range(50):
    x = [x]
s = repr(x)
[len(s), s[:5], s[-5:]]
