s = 'abcabc'
[s.find('c', -2), s.find('a', -100, -3), s.rfind('a', -5), s.count('b', -4, -1), s.startswith('c', -1), s.endswith('b', -5, -1), s.index('c', -4)]
