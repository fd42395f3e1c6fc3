a, b, c = 'apple', 'banana', 'cherry'
[a < b < c, a < c < b, 'a' <= 'a' < 'b', '' < 'a' != 'b']
