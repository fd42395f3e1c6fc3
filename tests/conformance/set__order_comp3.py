s = {x * 3 % 145 for x in [7, 17, -6, -1, 3]}
sorted(s) == list(s), list(s)
