x = 5
print(x * 2)
