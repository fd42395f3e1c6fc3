text = read_file('a.txt')
[text, text.splitlines(), len(text)]
