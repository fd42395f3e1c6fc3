vals = [True, False, 0, 1, 2, -1]
[(a + b, a - b, a * b) for a in vals for b in vals]
