items = [('apple', 1.5, 3), ('kiwi', 0.25, 12)]
for name, price, qty in items:
    print(f'{name:<8}{price:>6.2f}{qty:>4}{price * qty:>8.2f}')
print('-' * 26)
print(f'{"total":<8}{sum(i[1] * i[2] for i in items):>18.2f}')
