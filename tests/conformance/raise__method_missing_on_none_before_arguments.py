row = None
parts = row.split(",", [][0])
