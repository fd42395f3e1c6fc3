for x in []:
    pass
else:
    y = {}['k']
