[].index(1)
