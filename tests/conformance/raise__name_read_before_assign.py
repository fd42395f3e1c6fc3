print('start')
total = total + 1
