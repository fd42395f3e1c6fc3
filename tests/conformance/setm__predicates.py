a = {1, 2}
[a.issubset({1, 2, 3}), a.issubset([1]), a.issuperset([1]), a.issuperset({3}), a.isdisjoint({3, 4}), a.isdisjoint([2]), set().issubset(a)]
