'a'.join(5)
