for i in range(300):
    print(i, end=' ' if i % 20 else '\n')
print()
