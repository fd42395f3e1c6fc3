data = [3, 1, 2]
weights = {1: 30, 2: 20, 3: 10}
order = sorted(data, key=lambda v: weights[v])
weights = {}
order
