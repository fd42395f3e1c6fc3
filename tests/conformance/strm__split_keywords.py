['a,b,c'.split(sep=','), 'a b c'.split(maxsplit=1), 'a,b,c'.rsplit(sep=',', maxsplit=1), 'a b'.split(None), 'x\ny'.splitlines(keepends=False)]
