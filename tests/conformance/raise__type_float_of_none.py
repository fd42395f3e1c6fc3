float(None)
