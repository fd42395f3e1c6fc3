xs = [[1]]
xs.remove([2])
