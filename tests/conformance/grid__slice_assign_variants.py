out = []
for a, b, new in [(0, 0, [9]), (1, 3, []), (2, 2, [7, 8]), (-2, None, [0]), (5, 1, ['x']), (None, None, [])]:
    xs = [1, 2, 3, 4]
    xs[a:b] = new
    out.append(xs)
out
