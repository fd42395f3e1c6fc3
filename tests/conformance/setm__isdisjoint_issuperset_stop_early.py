# isdisjoint() and issuperset() walk a non-set argument item by item and stop
# as soon as the answer is known: later items are neither hashed nor consumed.
seen = {1, 2}
g = (x for x in [3, 1, 4, 5])
h = (x for x in [1, 7, 2, 8])
early = [seen.isdisjoint(g), list(g), seen.issuperset(h), list(h)]
unhashable_after = [seen.isdisjoint([2, [0]]), seen.issuperset([5, [0]])]
whole = [seen.isdisjoint("ab"), seen.issuperset(range(1, 3)), seen.issuperset({1: 0}.keys())]
[early, unhashable_after, whole]
