min(1, 2, default=0)
