float('1.5.2')
