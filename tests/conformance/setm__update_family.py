a = {1, 2, 3}
a.update([4], (5,))
b = {1, 2, 3, 4}
b.difference_update({1}, [2])
c = {1, 2, 3}
c.intersection_update([2, 3, 9])
[sorted(a), sorted(b), sorted(c), a.update(), c]
