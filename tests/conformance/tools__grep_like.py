hits = []
for path in find_files('**/*'):
    if path.endswith('.txt') or path.endswith('.md'):
        for i, line in enumerate(read_file(path).splitlines(), 1):
            if 'e' in line:
                hits.append(f'{path}:{i}:{line}')
hits
