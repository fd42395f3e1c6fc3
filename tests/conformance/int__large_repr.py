x = 1
for i in range(100):
    x *= 7
[x, -x, str(x)[:10], len(str(x))]
