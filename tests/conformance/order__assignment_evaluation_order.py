# Which side is evaluated first: the value before the targets for `=`, the
# target's subscript before the value for `+=`, keys before values in a dict
# display, chained targets left to right, call arguments left to right.
y = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]
d = {}
d[y.pop()] = y.pop()
e = {16: 100, 15: 100}
e[y.pop()] += y.pop()
x = [0] * 20
a = x[y.pop()] = y.pop()
x[y.pop()], x[y.pop()] = y.pop(), y.pop()
disp = {y.pop(): y.pop(), y.pop(): y.pop()}
print(y.pop(), y.pop(), sep=str(y.pop()))
(d, e, a, x, disp, y)
