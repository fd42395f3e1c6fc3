xs = [f'{x:>4}' for x in [1, 22, 333]]
print('|'.join(xs))
xs
