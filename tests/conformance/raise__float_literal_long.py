float('y' * 300)
