inf = float('inf')
nan = float('nan')
[f'{nan:#}', f'{inf:#}', f'{-inf:#>8}', f'{nan:#g}', f'{inf:#.0e}', f'{7:5c}', f'{65:<3c}|', f'{65:^5c}', f'{True:3c}' == '  \x01']
