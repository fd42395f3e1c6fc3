[int(3.9), int(-3.9), int(0.5), int(-0.0), int(1e20), int(True), int(False)]
