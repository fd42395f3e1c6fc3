s = {1, 2}
for x in s:
    s.add(x + 10)
