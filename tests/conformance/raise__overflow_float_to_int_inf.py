int(float('inf'))
