inventory = {'b': 2, 'a': 5, 'c': 0}
lines = []
for name, qty in sorted(inventory.items()):
    if not qty:
        continue
    lines.append(f'{name}: {qty}')
lines
