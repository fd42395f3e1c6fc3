[range(0, 20, 3).index(9.0), range(5).count(2.0)]
