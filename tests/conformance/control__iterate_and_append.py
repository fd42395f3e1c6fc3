xs = [1]
for x in xs:
    if x < 5:
        xs.append(x + 1)
xs
