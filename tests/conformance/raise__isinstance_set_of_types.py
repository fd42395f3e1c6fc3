# A set of types (a common slip for a tuple) is not a type: CPython's
# TypeError when the call runs, after the set is built; a tuple holding one
# is tried in order, so an earlier match returns first.
print(isinstance(1, (int, {str})))
print(isinstance("a", (str, {int, float})))
x = isinstance("a", (int, {str}))
