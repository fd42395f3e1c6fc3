# pop() on an empty dict raises KeyError for the key, even an unhashable one.
cache = {}
cache.pop(["k"])
