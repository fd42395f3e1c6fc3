r = range(0, 20, 3)
q = range(10, 0, -2)
[r.index(9), r.count(6), r.count(7), r.count(9.0), q.index(4), q.count(4), range(0).count(0), r.count('a'), range(-5, 5).index(-5), range(-5, 5).index(True), range(10000000000, 10000000005).index(10000000003)]
