xs = [[1]][0]
xs.bit_length()
