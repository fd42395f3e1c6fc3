for a, b in [(1, 2), None]:
    pass
