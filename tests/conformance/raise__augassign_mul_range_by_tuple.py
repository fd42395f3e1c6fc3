# A range on the left of *= with a sequence on the right is an unsupported
# operand, not a sequence repeat as range * tuple would be.
steps = range(3)
steps *= (1,)
