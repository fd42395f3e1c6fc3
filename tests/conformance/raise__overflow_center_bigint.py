'x'.center(int('9' * 30))
