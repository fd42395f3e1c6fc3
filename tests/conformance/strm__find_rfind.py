s = 'abcabcabc'
[s.find('c'), s.find('x'), s.find(''), s.find('a', 1), s.find('a', 1, 3), s.find('a', -3), s.rfind('a'), s.rfind('x'), s.rfind(''), s.rfind('b', 0, 5), s.find('', 20), s.rfind('', 3, 1)]
