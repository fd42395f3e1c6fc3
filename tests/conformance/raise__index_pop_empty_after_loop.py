xs = [1, 2]
for i in range(3):
    xs.pop()
