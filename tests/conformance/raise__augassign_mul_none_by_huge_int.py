# *= with a huge count on a value that cannot be repeated is the TypeError
# of the operator, not the OverflowError of reading the count.
total = None
total *= 12345678901234567890
