pairs = list(enumerate(start=1))
