# min() computes each item's key before pulling the next item.
min((1 / (2 - x) for x in range(3)), key=lambda v: v + 'a')
