a = {1, 2}
[a.issubset(a), a.issuperset(a), a.isdisjoint(set()), set().isdisjoint(set()), a.issubset({2, 1})]
