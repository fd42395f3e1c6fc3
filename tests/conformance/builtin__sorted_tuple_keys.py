rows = [('bob', 27), ('ann', 31), ('cid', 27)]
sorted(rows, key=lambda r: (r[1], r[0]))
