xs = [1]
xs.append(2)
xs.append([3])
xs.extend([4, 5])
xs.extend('ab')
xs.extend(range(2))
xs.extend((9,))
xs.extend({'k': 1})
xs
