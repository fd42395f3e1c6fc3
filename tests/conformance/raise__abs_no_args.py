abs()
