a = set([60, 10, 64, -20, 63, 66, 81, 10, 30, -17, 54, 44, 75, -4])
out = []
for i in range(len(a)):
    out.append(a.pop())
out
