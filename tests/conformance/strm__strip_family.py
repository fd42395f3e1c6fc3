s = '  \t hello \n '
[s.strip(), s.lstrip(), s.rstrip(), 'xxhixx'.strip('x'), 'abcHIcba'.strip('abc'), 'hello'.strip(''), ''.strip(), 'aaa'.lstrip('a'), '..x..'.rstrip('.'), 'hi'.strip(None)]
