d = {'\ud800': 1, '\udc00': 2}
d['\ud800'] += 10
s = {'\ud800', '\ud800', 'x\udfff'}
[d, d['\ud800'], '\ud800' in d, '\ud801' in d, len(s), sorted(s), '\ud800' == '\ud800', '\ud800' != '\udc00', ('\ud800',) == ('\ud800',)]
