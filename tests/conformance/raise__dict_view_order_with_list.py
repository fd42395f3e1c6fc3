d = {"a": 1}
d.keys() < ["a", "b"]
