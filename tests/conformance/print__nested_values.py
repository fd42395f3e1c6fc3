print([1.0, 'x', None], {'a': (1,)}, set(), range(2), {1: 2}.keys())
print('a' 'b', 1e100, 12345678901234567890)
