list(enumerate(None))
