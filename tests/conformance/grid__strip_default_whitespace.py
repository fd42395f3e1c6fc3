s = '\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000'
[len(s.strip()), len(('x' + s + 'x').split()), [c.isspace() for c in s], len(s.strip('\t'))]
