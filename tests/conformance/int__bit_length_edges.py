[(-1).bit_length(), (1023).bit_length(), (1024).bit_length(), (9223372036854775807).bit_length(), (-9223372036854775808).bit_length(), (True).bit_length()]
