x = 1
for i in range(1500):
    x *= 1000
x
