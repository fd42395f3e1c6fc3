# max() compares each item as it arrives: the str/int comparison fails
# before the generator reaches its ZeroDivisionError.
max(1 if i == 0 else 'a' if i == 1 else 1 / 0 for i in range(3))
