x = [None][0]
x.split()
