xs = [1]
xs.append(xs)
[xs, str(xs), len(xs)]
