# the items view is the shorter side, so its ('a', [1]) is looked up in the set
d = {'a': [1], 'b': 2}
d.items().isdisjoint({('b', 2), ('c', 3), ('d', 4)})
