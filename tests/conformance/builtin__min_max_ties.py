pairs = [(1, 'a'), (2, 'b'), (1, 'c'), (2, 'd')]
[min(pairs, key=lambda p: p[0]), max(pairs, key=lambda p: p[0])]
