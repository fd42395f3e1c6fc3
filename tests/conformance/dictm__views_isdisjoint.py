# keys and items views have set's isdisjoint (dictviews_isdisjoint): the
# shorter side is walked when the other is a set or a keys/items view
d = {'a': 1, 'b': 2}
k = d.keys()
i = d.items()
print(k.isdisjoint(['x', 'y']), k.isdisjoint('abc'), k.isdisjoint({'b'}), k.isdisjoint({}.keys()))
print(i.isdisjoint([('a', 2)]), i.isdisjoint([('a', 1)]), i.isdisjoint([[1], 'ab']), i.isdisjoint({('b', 2), ('z', 0), ('y', 0)}))
print(k.isdisjoint(k), i.isdisjoint(i), {}.items().isdisjoint({}.items()), k.isdisjoint(x for x in 'zb'))
f = {'a': [1]}
[f.items().isdisjoint(f.items()), f.keys().isdisjoint({'a': 0, 'c': 0}.keys())]
