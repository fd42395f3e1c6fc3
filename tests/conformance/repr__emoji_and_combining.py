s = '👍🏽 café'
[s, len(s), s[0], s[1], s.upper()]
