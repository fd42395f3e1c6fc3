# Two distinct lists that each hold themselves: == recurses until CPython's
# recursion limit ("... in comparison"); x == x itself is True (identity).
x = []
x.append(x)
y = []
y.append(y)
print(x == x, x in x)
x == y
