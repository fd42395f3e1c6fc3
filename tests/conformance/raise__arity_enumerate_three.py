for i, x in enumerate(["a"], 1, 2):
    print(i, x)
