x = 10
name = 'bob'
[f'{x=}', f'{x = }', f'{name=}', f'{x*2=}', f'{x=:5}', f'{name=!s}', f'{3.5=:.2f}', f'{name = !r:>6}']
