list(None)
