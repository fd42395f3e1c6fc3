n = 1
for i in range(1, 31):
    n *= i
n
