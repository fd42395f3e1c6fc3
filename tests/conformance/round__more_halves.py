[round(5.5), round(6.5), round(-5.5), round(0.05, 1), round(0.15, 1), round(0.25, 1), round(0.35, 1), round(1.45, 1), round(2.345, 2), round(1e22, -21), round(123.456, -1)]
