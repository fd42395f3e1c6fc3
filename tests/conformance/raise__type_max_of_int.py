max(1)
