rows = [('b', 2, 'x'), ('a', 3, 'y'), ('c', 2, 'z')]
[sort_by(rows, 0), sort_by(rows, 1), sort_by(rows, -1, reverse=True), sort_by([[3, 'a'], [1, 'b']], 0)]
