xs = [1]
xs.pop(index=0)
