s = 'a--b----c--'
[[s.split('--', n), s.rsplit('--', n)] for n in [-1, 0, 1, 2, 5]] + [s.split('---'), s.rsplit('---'), 'aaaa'.split('aa'), 'aaaaa'.rsplit('aa')]
