a = {1, 2, 3}
b = {2, 3, 4}
[sorted(a.union(b)), sorted(a.union([5], (6,))), sorted(a.intersection(b)), sorted(a.intersection(b, {3})), a.union(), sorted(b.intersection([4, 4, 2]))]
