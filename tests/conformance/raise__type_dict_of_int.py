dict(1)
