x = int('1' * 400)
round(x * 1.0)
