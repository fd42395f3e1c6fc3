dict(['ab', 'c'])
