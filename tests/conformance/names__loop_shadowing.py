total = 0
for x in range(3):
    for x in range(2):
        total += x
[total, x]
