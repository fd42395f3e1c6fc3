d = {}
for i in range(10000):
    d[i % 997] = d.get(i % 997, 0) + i
[len(d), d[0], d[996], sum(d.values())]
