xs = [1, 2, 3, 4, 5]
a = xs.pop()
b = xs.pop(0)
c = xs.pop(-2)
[a, b, c, xs]
