s = 'abcabcab'
[[s.find(sub, a, b), s.rfind(sub, a, b), s.count(sub, a, b)] for sub in ['', 'a', 'ab', 'ca', 'x'] for a in [None, -3, 0, 2, 9] for b in [None, -1, 3, 20]]
