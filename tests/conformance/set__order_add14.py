s = set()
for x in [88, 69, 3, 97, 67, 38, 82, 11]:
    s.add(x)
list(s)
