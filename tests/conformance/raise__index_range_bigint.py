range(3)[int('9' * 30)]
