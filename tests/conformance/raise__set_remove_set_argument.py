# remove() of a set argument raises KeyError (not TypeError: unhashable).
seen = {1, 2}
seen.remove({1})
