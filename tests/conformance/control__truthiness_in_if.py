out = []
for v in [0, 1, '', 'a', [], [0], {}, None, 0.0, range(0)]:
    if v:
        out.append('T')
    else:
        out.append('F')
''.join(out)
