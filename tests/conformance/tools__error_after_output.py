# Raise=FileNotFound
# message: any
print('reading')
x = read_file('a.txt')
print(len(x))
read_file('gone.txt')
