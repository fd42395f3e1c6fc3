d = {}
cur = d
for i in range(30):
    cur['k'] = {}
    cur = cur['k']
len(repr(d))
