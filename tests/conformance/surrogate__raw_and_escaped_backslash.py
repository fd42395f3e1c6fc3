a = r'\ud800'
b = '\\ud800'
c = '\ud800'
[a, b, len(a), len(b), len(c), a == b, c != b]
