enumerate([], 'a')
