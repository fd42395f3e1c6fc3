b = [True][0]
b.is_integer()
