rows = [('a', 1), ('b', 2), ('c', 1), ('d', 2)]
[sort_by(rows, 1), sort_by(rows, 1, reverse=True), sort_by([], 'x'), rows]
