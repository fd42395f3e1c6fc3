big = int('9' * 30)
xs = [1, 2, 3]
[xs[big:], xs[-big:], xs[:big], 'abc'[-big:big], xs[::big], xs[::-big], range(10)[big:]]
