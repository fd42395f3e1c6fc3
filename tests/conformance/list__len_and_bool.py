xs = [0]
[len(xs), len([]), bool(xs), len([[], []])]
