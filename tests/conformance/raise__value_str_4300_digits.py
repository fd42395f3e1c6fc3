x = int('9' * 4300)
y = x * 10
str(y)
