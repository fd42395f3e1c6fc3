# xfail: alternate form (#) adds "." to nan/inf, and "c" on an int aligns left instead of right (interpreter bugs, reported)
inf = float('inf')
nan = float('nan')
[f'{nan:#}', f'{inf:#}', f'{-inf:#>8}', f'{nan:#g}', f'{inf:#.0e}', f'{7:5c}', f'{65:<3c}|', f'{65:^5c}', f'{True:3c}' == '  \x01']
