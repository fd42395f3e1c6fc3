[s.expandtabs(t) for s in ['\t', 'a\t', 'ab\tc', 'abc\td\te', '\ta\tb\n\tc', 'x\r\ty'] for t in [0, 1, 2, 3, 4, 8]]
