[round(i / 8, 2) for i in range(-12, 13)] + [round(i * 0.05, 1) for i in range(20)] + [round(i + 0.5) for i in range(-5, 6)]
