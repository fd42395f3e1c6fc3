xs = [1, 2]
ys = [
    xs[0],
    xs[1],
    xs[2],
]
