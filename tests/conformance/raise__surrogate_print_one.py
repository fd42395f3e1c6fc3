print('before')
x = 'ab\ud800'
print('x', x)
