# Raise=FileNotFound
# message: any
read_file('nope.txt')
