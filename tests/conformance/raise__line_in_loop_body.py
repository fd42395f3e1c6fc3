total = 0
for i in range(3):
    total += i
    if i == 2:
        total += 'x'
