[round(0.1, 20), round(1e-300, 305), round(2.675, 10), round(1.5, 1), round(-1.25, 1), round(1e16 + 2, -1)]
