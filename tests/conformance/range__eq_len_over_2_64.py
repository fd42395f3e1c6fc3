a = int('36893488147419103232')
[range(a) == range(a + 1), range(0, a, 2) == range(0, a + 1, 2), range(a) == range(a)]
