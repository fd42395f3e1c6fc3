x = None
x['a']
