a = set([101, -13, 85, 43, 83, -10, 76, -12, 98, -4, -5, 45, 29])
out = []
for i in range(len(a)):
    out.append(a.pop())
out
