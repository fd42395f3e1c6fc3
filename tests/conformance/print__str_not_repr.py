print('quote\'s', "tab\t", 1.0, None, True, 1e16, -0.0)
