round(1.5, 'a')
