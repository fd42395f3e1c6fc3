xs = [3, 1, 2, -5, 0]
xs.sort()
ys = ['b', 'A', 'c', 'a']
ys.sort(reverse=True)
zs = [2.5, 1, True, 0.5]
zs.sort()
[xs, ys, zs]
