pairs = [('b', 2), ('a', 1), ('c', 2), ('d', 1), ('e', 2)]
pairs.sort(key=lambda p: p[1])
a = list(pairs)
pairs.sort(key=lambda p: p[1], reverse=True)
[a, pairs]
