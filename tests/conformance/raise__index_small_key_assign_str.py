# A key that fits is converted, then the assignment is refused.
s = 'abc'
s[True] = 'x'
