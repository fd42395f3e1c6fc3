len(42)
