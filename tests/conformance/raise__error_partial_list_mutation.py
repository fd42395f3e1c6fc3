xs = []
for v in [1, 2, 0, 4]:
    xs.append(10 // v)
print(xs)
