xs = []
x = 1.0
for i in range(25):
    xs.append(x)
    x *= 10
y = 1.0
for i in range(25):
    xs.append(y)
    y /= 10
[repr(v) for v in xs]
