out = []
for v in [1, 'a', 2.5, [1], None, True]:
    if isinstance(v, bool):
        out.append('bool')
    elif isinstance(v, int):
        out.append('int')
    elif isinstance(v, (float, str)):
        out.append('scalar')
    else:
        out.append('other')
out
