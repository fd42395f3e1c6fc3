'abc' * int('9' * 30)
