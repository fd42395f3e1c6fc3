xs = [1, 2, 3]
xs.insert(0, 'a')
xs.insert(100, 'z')
xs.insert(-1, 'm')
xs.insert(-100, 'first')
xs
