float(int('9' * 400))
