write_file('a.txt', 'replaced')
read_file('a.txt')
