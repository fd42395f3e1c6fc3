x = float('nan')
xs = [x]
[x in xs, xs == xs, [x] == [x], x == x, xs.count(x), xs.index(x)]
