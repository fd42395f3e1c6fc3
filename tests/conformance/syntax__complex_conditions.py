rows = [None, [], [None], [1], [0, 1]]
out = []
for r in rows:
    if not r or r[0] is None:
        out.append('empty-ish')
    elif len(r) > 1 and not r[0]:
        out.append('leading zero')
    else:
        out.append('ok')
out
