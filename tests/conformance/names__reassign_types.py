x = 1
x = 'one'
x = [x]
x
