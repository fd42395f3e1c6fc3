x = [5][0]
x.is_integer()
