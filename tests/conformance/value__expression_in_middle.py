1 + 1
'ignored'
x = 3
x * 2
