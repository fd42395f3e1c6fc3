data = [(1, (2, 3)), (4, (5, 6))]
[a + b * c for a, (b, c) in data]
