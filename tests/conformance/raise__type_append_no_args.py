xs = []
xs.append()
