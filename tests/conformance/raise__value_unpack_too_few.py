a, b, c = 'ab'
