counts = {"a": 1}
counts.append(print("never printed") or 1 / 0)
