s = {1}
s.issubset(3)
