float(x='1.5')
