float('1e')
