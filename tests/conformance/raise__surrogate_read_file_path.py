# message: any
t = read_file('\ud800.txt')
