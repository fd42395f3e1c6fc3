for a, b in [(1, 2), (3, 4, 5)]:
    pass
