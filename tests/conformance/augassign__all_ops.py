x = 10
x += 5
a = x
x -= 3
b = x
x *= 2
c = x
x //= 5
d = x
x %= 3
e = x
x /= 4
[a, b, c, d, e, x]
