xs = [1, 'a', [2], (3,), None]
[1 in xs, 'a' in xs, [2] in xs, (3,) in xs, None in xs, 2 in xs, 1.0 in xs, True in xs]
