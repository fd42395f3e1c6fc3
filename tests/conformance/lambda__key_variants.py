rows = [[3, 'c'], [-1, 'a'], [2, 'b'], [-4, 'd']]
[sorted(rows, key=lambda r: r[0] if r[0] > 0 else -r[0]), [sorted(r, key=lambda v: str(v)) for r in rows], min(rows, key=lambda r: (r[1] > 'b', r[0])), max(rows, key=lambda r: abs(r[0]))]
