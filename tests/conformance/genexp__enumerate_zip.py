a = ['x', 'y', 'z']
b = [1, 2, 3]
[dict((k, v) for k, v in zip(a, b)), [i for i, v in enumerate(a) if v != 'y'], list(zip(range(3), (c * 2 for c in a)))]
