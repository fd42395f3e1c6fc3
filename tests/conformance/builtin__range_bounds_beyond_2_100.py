# xfail: range bounds are kept in i128 within +-2^100 (RANGE_BOUND); beyond that lackpy raises OverflowError "Python int too large to convert to C ssize_t" when the range is made, where CPython only fails on len() of a range longer than sys.maxsize
# CPython keeps range bounds as arbitrary ints: an empty range with a huge
# bound, or a short range far out, iterates normally.
x = int("1" + "0" * 40)
(list(range(-x)), list(range(x, x + 2)), x + 1 in range(x, x + 2))
