int(float('nan'))
