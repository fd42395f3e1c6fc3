# list() asks len() first, which must fit a C ssize_t.
big = range(100000000000000000000)
first = [big[0], big[-1], len(big[::50000000000000000000])]
items = list(big)
