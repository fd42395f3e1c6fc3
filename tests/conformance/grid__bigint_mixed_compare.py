[[int('1' + '0' * k) == float('1e' + str(k)), int('1' + '0' * k) < float('1e' + str(k)), int('1' + '0' * k) + 1 > float('1e' + str(k))] for k in range(14, 26)]
