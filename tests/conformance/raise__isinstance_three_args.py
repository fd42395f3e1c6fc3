isinstance(1, int, int)
