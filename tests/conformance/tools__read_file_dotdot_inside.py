read_file('sub/../a.txt')
