# The tuple is tried in order: an item that is no type raises only when
# the ones before it did not match.
ok = isinstance(1, (int, [str]))
print(ok)
bad = isinstance("s", (int, (float, [str])))
