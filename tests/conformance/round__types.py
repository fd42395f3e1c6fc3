[round(2.4), round(2.6), round(True), round(7), round(-0.4), round(1e20)]
