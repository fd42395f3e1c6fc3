'a b c'.split(' ', 1, 2)
