s = '''first
second'''
t = "a\
b"
total = (1 +
         2)
[s, t, total, s.count('\n')]
