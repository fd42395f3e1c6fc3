xs = [1, 2]
ys = [x for x in xs if x > limit]
limit = 1
