[s.islower() for s in ['abc', 'aBc', '', '123', 'a1']] + [s.isupper() for s in ['ABC', 'AbC', '', '123', 'A1', 'ÉÀ']]
