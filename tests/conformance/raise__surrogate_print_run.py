print('start', end=' ')
print('é' + '\ud83d\ude00' + 'z')
