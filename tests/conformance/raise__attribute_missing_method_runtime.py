xs = [1, 2] if True else 'ab'
xs.upper()
