a, b = 0, 1
for i in range(200):
    a, b = b, a + b
a
