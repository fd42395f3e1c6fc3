int(x='10')
