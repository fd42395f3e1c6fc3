s = {'a'}
s.remove('b')
