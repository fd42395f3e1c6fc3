x = find_files('nothing*')
y = read_file('a.txt').split('\n')
[x, y, isinstance(x, list), isinstance(y[0], str)]
