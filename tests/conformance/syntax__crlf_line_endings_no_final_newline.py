a = 1
b = [a,
     2]
b