d = {'a': 1}
d.get(key='a')
