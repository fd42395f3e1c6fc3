out = {}
for p in find_files('**/*.txt'):
    out[p] = len(read_file(p).splitlines())
out
