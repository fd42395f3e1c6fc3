# set() of a generator hashes each item as it arrives: the unhashable list
# fails before the generator reaches its ZeroDivisionError.
set([1] if i == 0 else 1 / 0 for i in range(2))
