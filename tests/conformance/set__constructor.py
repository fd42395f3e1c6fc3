[set(), sorted(set('hello')), sorted(set([3, 1, 3])), set(range(4)), len(set('aab')), sorted(set({'x': 1, 'y': 2}))]
