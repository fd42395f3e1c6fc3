[int('ff', 16), int('FF', 16), int('0xff', 16), int('777', 8), int('0o17', 8), int('1010', 2), int('0b11', 2), int('z', 36), int('0x1f', 0), int('10', 0)]
