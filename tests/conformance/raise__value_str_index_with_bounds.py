'hello'.index('h', 1)
