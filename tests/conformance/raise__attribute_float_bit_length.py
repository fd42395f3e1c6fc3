x = [2.5][0]
x.bit_length()
