x = 5
if x > 10:
    y = 1
else:
    y = x / 0
