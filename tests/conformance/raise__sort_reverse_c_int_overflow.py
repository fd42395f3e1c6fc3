xs = [2, 1]
xs.sort(reverse=99999999999999999999)
