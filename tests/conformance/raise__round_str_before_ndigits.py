round('a', 'b')
