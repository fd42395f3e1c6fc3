[list(enumerate('abc')), list(enumerate(['x', 'y'], 1)), list(enumerate([], 5)), list(enumerate('ab', start=-1)), list(enumerate(range(2), start=10))]
