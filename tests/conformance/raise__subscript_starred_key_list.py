# x[*i] indexes with a tuple: CPython's TypeError
x = [1, 2]
i = [0]
x[*i]
