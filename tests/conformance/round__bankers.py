[round(0.5), round(1.5), round(2.5), round(3.5), round(-0.5), round(-1.5), round(-2.5)]
