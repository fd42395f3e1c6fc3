# format(n, 'c') of a surrogate code point makes a lone surrogate, as CPython does
s = '\ud800'
lo = f'{55296:c}'
hi = f'{57343:>3c}'
print(repr(lo), repr(hi), lo == s, hi > s, len(hi))
[f'{56320:c}{55297:c}', f'{0xdc80:c}' + s, f'{55296:c}'.join('ab')]
