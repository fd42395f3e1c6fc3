xs = ['banana', 'Apple', 'cherry', 'apple', 'Banana']
[sorted(xs), sorted(xs, key=lambda s: s.lower()), sorted(xs, key=lambda s: (s.lower(), s))]
