s = {'a', 'b'}
['a' in s, 'c' in s, len(s), 1 in {1.0}, True in {1}]
