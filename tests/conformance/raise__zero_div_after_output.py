for d in [2, 1, 0]:
    print(10 // d)
