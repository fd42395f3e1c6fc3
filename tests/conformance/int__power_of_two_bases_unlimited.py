x = int('1' * 20000, 2)
y = int('7' * 6000, 8)
[x.bit_length(), y.bit_length(), len(f'{x:b}'), len(f'{y:o}'), f'{x:x}'[:8]]
