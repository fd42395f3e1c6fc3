s = 'abc'
s -= 'c'
