[round(2.675, 2), round(1.005, 2), round(3.14159, 3), round(1234.5678, -2), round(0.125, 2), round(0.375, 2), round(2.5, 0), round(-2.5, 0)]
