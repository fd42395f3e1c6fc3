[f'{3:F}', f'{3:E}', f'{3:G}', f'{10:n}', f'{float("inf"):F}', f'{float("nan"):E}', f'{1e20:G}', f'{1e-20:G}']
