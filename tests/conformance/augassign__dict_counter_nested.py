stats = {'a': {'hits': 0}}
for i in range(3):
    stats['a']['hits'] += i
stats
