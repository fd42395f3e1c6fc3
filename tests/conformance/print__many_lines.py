for i in range(5):
    print(i, i * i, sep=':')
