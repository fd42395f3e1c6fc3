int('12a')
