[f'{None}', f'{[1, "a"]}', f'{(1,)}', f'{ {"k": 1} }', f'{set()}', f'{None:>6}' if False else f'{str(None):>6}']
