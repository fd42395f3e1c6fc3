isinstance(int)
