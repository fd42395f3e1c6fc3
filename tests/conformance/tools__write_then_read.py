ok = write_file('out/new.txt', 'line1\nline2\n')
[ok, read_file('out/new.txt'), find_files('out/*')]
