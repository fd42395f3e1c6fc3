s = 'x\udc80y'
n = 3
[f'{s!r}', f'{s!a}', f'<{s}>', f'{n}\ud800{n}', len(f'{s}{s}'), f'{s!r:>12}', f'{"é" + s!a}']
