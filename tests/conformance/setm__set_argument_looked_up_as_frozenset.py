# A set used as an element to look up in a set is treated as a frozenset:
# never found, and no "unhashable" error.
seen = {1, 2, "a"}
probe = {1, 2}
found = [probe in seen, set() in seen, probe not in seen]
seen.discard(probe)
seen.discard(set())
[found, sorted(seen, key=repr)]
