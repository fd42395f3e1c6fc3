t = [(1,)][0]
t.append(2)
