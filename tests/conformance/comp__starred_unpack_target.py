rows = [[1, 2, 3], [4, 5], [6]]
[(first, rest) for first, *rest in rows]
