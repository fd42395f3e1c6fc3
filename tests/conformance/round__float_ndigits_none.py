[round(2.5, None), round(3.7, None), round(0.1 + 0.2, 10)]
