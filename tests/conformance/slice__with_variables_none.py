xs = list(range(6))
a = None
b = -2
[xs[a:b], xs[b:a], xs[a:a:a], xs[1:b:2]]
