x = 'outer'
ys = [x for x in range(3)]
[x, ys]
