e = enumerate('ab')
e[0]
