d = {'a': 1, 'b': [2, 3]}
xs = [1, 2, 3]
[f'{d["a"]}', f"{d['b'][1]}", f'{len(xs)}', f'{xs[-1] * 2}', f'{"yes" if xs else "no"}', f'{[x * x for x in xs]}', f'{sum(xs) / len(xs):.2f}', f'{d}']
