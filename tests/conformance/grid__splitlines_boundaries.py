s = 'a\nb\rc\r\nd\x0be\x0cf\x1cg\x1dh\x1ei\x85j\u2028k\u2029l\n\nm'
[s.splitlines(), s.splitlines(True), len(s.split()), 'x\x0by'.split()]
