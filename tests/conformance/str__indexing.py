s = 'héllo😀'
[s[0], s[1], s[-1], s[-2], len(s), s[5]]
