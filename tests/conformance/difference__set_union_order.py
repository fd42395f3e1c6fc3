# expect-difference: set operations keep insertion order (left operand first, then new elements of the right)
# lackpy-repr: [{1, 2, 3, 0}, {2, 3, 4, 1}]
[{1, 2, 3}.union({0}), {2, 3}.union([4, 1])]
