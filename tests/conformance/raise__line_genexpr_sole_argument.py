data = {"n": 3}
total = sum(
    v for v in data["n"])
