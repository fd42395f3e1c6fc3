d = {'a': 1}
r = max(
    1,
    d['b'],
)
