[s.isidentifier() for s in ['abc', 'a1', '1a', '', 'a b', 'é', 'for', 'x_y', 'a-b']]
