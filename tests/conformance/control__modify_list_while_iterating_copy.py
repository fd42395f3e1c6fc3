xs = [1, 2, 3, 4]
for x in xs.copy():
    if x % 2 == 0:
        xs.remove(x)
xs
