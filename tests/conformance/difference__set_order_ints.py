# expect-difference: set iteration order is insertion order in lackpy; CPython orders small ints by hash
# lackpy-repr: [{3, 1, 2}, [10, 3, 9]]
[{3, 1, 2}, list({10, 3, 9})]
