for i in range(3):
    pass
j = 'unset'
for j in []:
    pass
[i, j]
