[round(1234, -2), round(1250, -2), round(1350, -2), round(-1250, -2), round(15, -1), round(25, -1), round(5, 0), round(12345678901234567890, -5)]
