# bool has int's methods, so the message names int.bit_length.
flag = True
flag.bit_length(signed=True)
