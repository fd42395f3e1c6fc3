n = 5
n.bit_length(2)
