d = {'a': 1, 'b': 2}
[len(d.keys()), len(d.items()), len(range(-5, 5, 3)), len(range(10, 0, -4)), len('😀é')]
