# d[*k] is d[(*k,)] in Python 3.11 (PEP 646): read, store, augmented, for target
k = ['a', 1]
d = {('a', 1): 10, (): 0}
d[*k] += 5
d[*'xy'] = 'z'
for d[*[2]] in range(3):
    pass
print(d[*k], d[*[]], d[*k,] == d[(*k,)])
d
