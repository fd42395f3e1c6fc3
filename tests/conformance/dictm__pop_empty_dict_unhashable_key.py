# An empty dict's pop() returns the default without hashing the key.
cache = {}
missing = cache.pop(["not", "hashable"], "default")
full = {"a": 1}
[missing, cache, full.pop("a", None), full.pop(("x", 1), 0), full]
