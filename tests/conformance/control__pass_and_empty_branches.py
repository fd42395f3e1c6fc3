x = 0
if x:
    pass
else:
    x = 1
for i in range(3):
    pass
[x, i]
