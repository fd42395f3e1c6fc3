# Raise=PathOutsideWorkspace
# message: any
read_file('/etc/passwd')
