# A set minus itself is cleared to a fresh table, so later adds land in a
# small table, not in the old one with its deleted slots.
ids = set([170, -19, 164, -34, 112, -44])
ids -= ids
ids.add(37)
ids.add(253)
other = set([170, -19, 164, -34, 112, -44])
other.difference_update(other)
other.add(37)
other.add(253)
[ids, other, list(ids), list(other)]
