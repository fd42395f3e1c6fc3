a = {1, 2, 3}
[sorted(a.difference([1], range(3, 5))), a.isdisjoint(range(4, 9)), a.issubset(range(10)), a.issuperset((1, 1, 2)), len(a.symmetric_difference('a')), a.intersection('abc')]
