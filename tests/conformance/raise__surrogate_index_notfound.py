t = 'abc'
n = t.index('\ud800')
