rows = [(1, 2), (3,)]
sort_by(rows, 1)
