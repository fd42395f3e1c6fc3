sorted([1], reversed=True)
