[i * 0.1 for i in range(25)] + [i / 7 for i in range(1, 15)] + [1.1 * i for i in range(12)]
