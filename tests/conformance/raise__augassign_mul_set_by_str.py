# A set and dict views on the left of *= are not repeated by a str.
seen = {1, 2}
keys = {"a": 1}.keys()
seen *= "ab"
