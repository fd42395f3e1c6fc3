[float('3'), float(' 1e-3 '), float('-0'), float(10000000000000000000000), float('+1.5E2'), float('iNf')]
