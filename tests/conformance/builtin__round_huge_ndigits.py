[round(1.5, int('9' * 30)), round(1.5, -int('9' * 30)), round(12345, int('9' * 30)), round(-2.5, int('9' * 30))]
