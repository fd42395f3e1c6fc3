out = []
for pos in [-100, -3, -1, 0, 1, 3, 100]:
    xs = [1, 2, 3]
    xs.insert(pos, 'x')
    out.append(xs)
ys = [5, 6, 5, 6, 5]
out.append([ys.index(5, s) for s in [-5, -1, 0, 1, 2, 4]])
out.append([ys.index(6, s, e) for s, e in [(0, 2), (-4, -1), (2, 100), (-100, 2)]])
out
