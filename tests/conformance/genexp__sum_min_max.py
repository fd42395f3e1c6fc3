xs = [3, -1, 4, -1, 5]
[sum(x * x for x in xs), min(x for x in xs if x > 0), max(abs(x) for x in xs), sorted(x for x in xs), ''.join(str(x) for x in xs)]
