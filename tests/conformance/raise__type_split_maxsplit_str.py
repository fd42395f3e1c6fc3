'a b'.split(maxsplit='x')
