found = []
for word in ['a', 'bb', 'ccc']:
    if len(word) == 2:
        found.append(word)
        break
    else:
        found.append('skip')
found
