files = find_files('**/*.txt')
summary = []
for f in files:
    lines = read_file(f).splitlines()
    summary.append(f'{f}: {len(lines)} lines, first={lines[0]!r}')
print('\n'.join(summary))
len(files)
