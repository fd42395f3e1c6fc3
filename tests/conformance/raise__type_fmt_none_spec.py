x = None
f'{x:d}'
