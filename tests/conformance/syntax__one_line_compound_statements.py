if True: a = 1
for i in range(2): b = i
if a > 5: c = 1
else: c = 2
[a, b, c]
