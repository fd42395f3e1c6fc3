total = 0
for i in range(5):
    total += i
