# Same for sorted() of a reversed huge range.
items = sorted(reversed(range(-100000000000000000000, 0)))
