# expect-difference: reprs of iterator objects show a memory address in CPython; lackpy prints a fixed placeholder address
[enumerate('a'), zip(), reversed([1]), (x for x in [1])]
