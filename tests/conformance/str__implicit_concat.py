s = ('abc'
     'def'
     "ghi")
s
