[read_file('sub/note.txt'), read_file(path='sub/deep/cfg.txt'), read_file('./b.md')]
