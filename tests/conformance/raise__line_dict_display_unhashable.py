key = ["a"]
d = {"x": 1,
     key: 2}
