[f'{True:b}', f'{True:x}', f'{True:e}', f'{True:%}', f'{True:c}' == '\x01', f'{False:#o}', f'{True:,}', f'{True:g}', f'{False:+}', f'{True:^7}', f'{True!r:^7}']
