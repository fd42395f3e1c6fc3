[f'{True:d}', f'{True:5}', f'{True:>6}', f'{False:x}', f'{True:.1f}', f'{True:s}' if False else f'{True!s:>6}', f'{True:}', f'{True:05}']
