lst = [1]
values = {'a': 1}
count = 3
index = 'i'
keys = list(values)
[lst, values, count, index, keys]
