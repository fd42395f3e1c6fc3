# A numpy-style column read on a list of rows: the key is the tuple
# (slice(None, None, None), 0), which a list refuses.
rows = [[1, 2], [3, 4]]
print("rows:", len(rows))
first_column = rows[:, 0]
