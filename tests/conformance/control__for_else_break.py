found = None
for x in [1, 3, 4, 5]:
    if x % 2 == 0:
        found = x
        break
else:
    found = 'none'
found2 = None
for x in [1, 3, 5]:
    if x % 2 == 0:
        found2 = x
        break
else:
    found2 = 'none'
[found, found2]
