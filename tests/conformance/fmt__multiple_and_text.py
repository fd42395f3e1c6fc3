name = 'Ann'
n = 3
f'Hello {name}, you have {n} new message{"s" if n != 1 else ""} ({n / 7:.1%}).'
