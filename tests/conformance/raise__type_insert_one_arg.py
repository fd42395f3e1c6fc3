xs = []
xs.insert(1)
