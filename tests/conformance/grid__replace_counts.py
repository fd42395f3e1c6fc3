[s.replace(a, b, n) for s in ['aaaa', 'abab', ''] for a, b in [('a', 'x'), ('ab', ''), ('', '-')] for n in [-1, 0, 1, 3]]
