rows = [{'a': 1}, {'b': 2}]
out = sorted(
    rows,
    key=lambda r: r['a'],
)
