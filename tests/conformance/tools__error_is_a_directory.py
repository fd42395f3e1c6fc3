# Raise=IsADirectory
# message: any
read_file('sub')
