r = round(2.5, 1, 2)
