xs = [1.5, 2.25, 3.125]
[sum(xs), sum(xs) / len(xs), round(sum(xs) / len(xs), 2), max(xs) - min(xs)]
