# expect-difference: after removals CPython reuses the deleted slot for the next add; lackpy replays the live elements in order
# lackpy-repr: [9, 17]
a = set([1, 9])
a.discard(1)
a.add(17)
list(a)
