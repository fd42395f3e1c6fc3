[round(-0.4, 0), round(-0.0), round(0.5, 0), round(-0.5, 0), round(-1e-20, 5), round(1e300)]
