pairs = [("a", 1), ("b", 2, 3)]
d = {k: v
     for k, v in pairs}
