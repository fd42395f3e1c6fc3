# *= on a dict (a type with sequence methods but no repeat) is not
# handed to the right operand as a repeat, unlike dict * list.
weights = {"a": 1, "b": 2}
weights *= [2]
