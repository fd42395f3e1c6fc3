a = {1, 2, 3, 4}
r1 = a.difference_update([1])
r2 = a.intersection_update({2, 3, 5})
[r1, r2, a]
