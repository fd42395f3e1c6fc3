# An index that does not fit a C ssize_t: IndexError, but not "out of range".
slots = [0, 0]
slots[9223372036854775808] = 1
