s = '\ud800'
print(f'value: {s}')
