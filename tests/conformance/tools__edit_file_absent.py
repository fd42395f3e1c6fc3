r = edit_file('b.md', 'zzz', 'y')
[r, read_file('b.md')]
