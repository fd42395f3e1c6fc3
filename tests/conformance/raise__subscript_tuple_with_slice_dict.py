# A dict hashes the tuple key item by item: the slice is unhashable.
counts = {"a": 1}
counts["a", 1:2] = 5
