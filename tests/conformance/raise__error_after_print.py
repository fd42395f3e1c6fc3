print('before')
xs = []
print(len(xs))
xs[0]
