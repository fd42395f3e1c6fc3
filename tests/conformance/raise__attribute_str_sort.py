s = ['cba'][0]
s.sort()
