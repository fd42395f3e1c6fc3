g = (c for c in 'abcdef')
first = []
for c in g:
    first.append(c)
    if c == 'b':
        break
[first, list(g)]
