[s.isalnum() for s in ['abc1', 'abc', '', 'a b', 'é9', '½']] + [s.isalpha() for s in ['abc', 'ab1', '', 'éß', 'a-b']]
