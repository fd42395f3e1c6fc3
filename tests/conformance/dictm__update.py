d = {'a': 1}
d.update({'b': 2})
d.update([('c', 3), ('a', 10)])
d.update(e=5)
d.update({'f': 6}, g=7)
d
