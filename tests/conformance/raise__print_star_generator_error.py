print('before')
print(*(10 // x for x in [2, 1, 0]))
