d = {1: "a"}
d.values() - ["a"]
