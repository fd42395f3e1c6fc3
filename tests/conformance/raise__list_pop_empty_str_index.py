xs = []
xs.pop("0")
