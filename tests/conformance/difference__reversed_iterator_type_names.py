# expect-difference: reprs of iterator objects show a memory address in CPython; lackpy prints a fixed placeholder address (the type names are CPython's)
# lackpy-repr: [<reversed object at 0x7f0000000000>, <reversed object at 0x7f0000000000>, <range_iterator object at 0x7f0000000000>, <dict_reversekeyiterator object at 0x7f0000000000>, <dict_reversekeyiterator object at 0x7f0000000000>, <dict_reversevalueiterator object at 0x7f0000000000>, <dict_reverseitemiterator object at 0x7f0000000000>]
d = {"a": 1}
[reversed("ab"), reversed((1,)), reversed(range(2)), reversed(d), reversed(d.keys()), reversed(d.values()), reversed(d.items())]
