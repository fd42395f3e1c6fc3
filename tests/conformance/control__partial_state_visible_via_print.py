xs = []
for v in [1, 2, 0, 4]:
    if v == 0:
        break
    xs.append(10 // v)
print(xs)
xs
