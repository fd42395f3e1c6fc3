# Raise=FileNotFound
# message: any
edit_file('missing.txt', 'a', 'b')
