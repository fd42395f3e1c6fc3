# A bound method called through *args (or as a key) is named after the
# receiver's own type: bool.bit_length(), not int.bit_length().
flag = True
flag.bit_length(*[1])
