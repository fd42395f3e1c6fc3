xs = [1]
xs = xs + 'ab'
