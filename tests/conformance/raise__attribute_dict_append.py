d = [{}][0]
d.append(1)
