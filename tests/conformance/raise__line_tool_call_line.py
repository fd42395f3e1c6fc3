# Raise=FileNotFound
# message: any
files = find_files('*.txt')
text = read_file(files[0])
missing = read_file('nope.txt')
