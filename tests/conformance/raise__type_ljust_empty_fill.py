'a'.ljust(5, '')
