min()
