h = int('9' * 25)
list(zip('ab', reversed(range(-h, 0))))
