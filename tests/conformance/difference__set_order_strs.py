# expect-difference: CPython's order of a str set changes from process to process (hash randomisation); lackpy's is insertion order
# lackpy-repr: {'pear', 'apple', 'fig'}
{'pear', 'apple', 'fig'}
