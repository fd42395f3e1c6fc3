xs = []
ok = len(xs) > 0 and xs[0] > 1
ok2 = len(xs) == 0 or xs[0] > 1
[ok, ok2]
