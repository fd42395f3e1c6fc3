xs = list('abcdef')
a = xs.pop(-1)
b = xs.pop(1)
xs.insert(-2, 'X')
[a, b, xs]
