# key=True.bit_length calls the bound method: CPython names it bool.bit_length.
flag = True
sorted([3, 1], key=flag.bit_length)
