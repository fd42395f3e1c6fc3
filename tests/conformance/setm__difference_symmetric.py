a = {1, 2, 3}
b = {2, 3, 4}
[sorted(a.difference(b)), sorted(a.difference(b, {1})), sorted(a.symmetric_difference(b)), sorted(a - b), sorted(b - a), a.symmetric_difference([3, 3])]
