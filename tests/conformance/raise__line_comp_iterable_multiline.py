rows = {"a": 1, "b": None}
out = [v
       for k in rows
       for v in rows[k]]
