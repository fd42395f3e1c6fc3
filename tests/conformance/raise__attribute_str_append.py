s = 'abc' if len('x') else []
s.append('d')
