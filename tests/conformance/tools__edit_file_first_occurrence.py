r = edit_file('b.md', 'hello', 'bye')
[r, read_file('b.md')]
