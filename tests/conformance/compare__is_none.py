x = None
y = 0
[x is None, y is None, x is not None, y is not None, None == None]
