x = [None][0]
x += 1
