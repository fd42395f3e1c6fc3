d = {}
d[float('nan')]
