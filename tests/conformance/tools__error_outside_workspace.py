# Raise=PathOutsideWorkspace
# message: any
read_file('../outside.txt')
