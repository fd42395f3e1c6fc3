xs = []
for i in range(3):
    xs.append(xs.copy())
xs
