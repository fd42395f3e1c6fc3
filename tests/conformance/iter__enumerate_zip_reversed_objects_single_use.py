e = enumerate('ab')
z = zip([1, 2], 'xy')
r = reversed([1, 2, 3])
[list(e), list(e), list(z), list(z), list(r), list(r)]
