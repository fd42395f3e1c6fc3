# Raise=ValueError
x = 'x'
y = int('12\ud800')
