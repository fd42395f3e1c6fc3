a = int('9' * 4300)
b = -a
h = int('f' * 5000, 16)
[len(str(a)), len(str(b)), len(repr(b)), h.bit_length(), len(f'{h:x}'), int('1' * 4300, 10) % 97, int('-' + '7' * 4300) % 1000]
