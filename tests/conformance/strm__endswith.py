['hello'.endswith('lo'), 'hello'.endswith(''), 'hello'.endswith(('x', 'llo')), 'hello'.endswith('ell', 0, 4), 'hello'.endswith('h', -10, 1), ''.endswith('a'), 'abc'.endswith('abc', 5)]
