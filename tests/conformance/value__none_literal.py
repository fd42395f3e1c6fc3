None
