s = 'hello world'
[s.index('o'), s.rindex('o'), s.index('o', 5), s.rindex('l', 0, 5), s.index(''), s.rindex('')]
