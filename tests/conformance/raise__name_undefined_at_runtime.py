x = 1
if x > 5:
    y = 2
y
