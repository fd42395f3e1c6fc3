[float('1.5'), float('  -2.25 '), float('1e3'), float('inf'), float('-Infinity'), float('nan'), float('1_000.5'), float('.5'), float('5.'), float(7), float(True)]
