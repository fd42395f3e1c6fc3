x = 10
result = [x * i for i in range(3)]
for x in range(2):
    pass
[result, x]
