s = 'héllo 😀\n\ttab\r\nwindows\n'
write_file('u.txt', s)
t = read_file('u.txt')
[t == s, len(t), t.splitlines()]
