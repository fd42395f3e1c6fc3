int('x' * 300)
