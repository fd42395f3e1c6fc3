n = 5
print(*n)
