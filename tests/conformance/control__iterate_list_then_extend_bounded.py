xs = [3]
for x in xs:
    if x > 0:
        xs.append(x - 1)
xs
