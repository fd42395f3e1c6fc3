[abs(-3), abs(3.5), abs(-0.0), abs(float('-inf')), abs(False), abs(-12345678901234567890)]
