d = {'a': 1}
d.update(a=2, b=3)
d.update()
d
