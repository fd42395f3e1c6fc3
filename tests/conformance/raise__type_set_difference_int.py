s = {1}
s.difference(5)
