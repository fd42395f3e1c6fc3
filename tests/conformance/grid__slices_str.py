s = 'abcdefg'
''.join(s[a:b:c] + '|' for a in [None, -8, -2, 0, 3, 9] for b in [None, -9, -1, 0, 4, 10] for c in [None, 1, 2, -1, -3])
