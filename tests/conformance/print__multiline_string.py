print('line1\nline2')
print('''a
b''')
