# An unhashable item before the slice is the one reported.
counts = {"a": 1}
value = counts[
    [1],
    ::2,
]
