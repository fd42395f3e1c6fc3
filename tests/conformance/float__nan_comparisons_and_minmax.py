nan = float('nan')
[nan < 1, 1 < nan, nan == 1, min([nan, 1]), min([1, nan]), max([nan, 5]), max(0, -0.0), max(-0.0, 0), min(0.0, -0.0)]
