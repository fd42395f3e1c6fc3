[list(zip([1, 2, 3], 'ab')), list(zip()), list(zip([1])), list(zip('ab', 'cd', 'ef')), list(zip([], [1])), dict(zip(['a', 'b'], range(2)))]
