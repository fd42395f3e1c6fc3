xs = [1, 2, 3, 4]
for x in xs:
    xs.remove(x)
xs
