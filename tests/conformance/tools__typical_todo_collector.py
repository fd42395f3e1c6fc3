hits = []
for path in find_files('**/*.py'):
    for n, line in enumerate(read_file(path).splitlines(), start=1):
        if 'return' in line:
            hits.append({'file': path, 'line': n, 'text': line.strip()})
hits
