# \N{...} escapes CPython 3.11 knows: any case for ordinary names, aliases,
# algorithmic names in capitals; a raw string keeps the text
s = '\N{bullet}\N{Em Dash}\N{NULL}\N{BOM}\N{LINE FEED}\N{HANGUL SYLLABLE GAG}\N{CJK UNIFIED IDEOGRAPH-4E00}\N{CJK UNIFIED IDEOGRAPH-3134A}'
t = f'{len(s)}\N{SNOWMAN}' + r'\N{SHAKING FACE}'
print(repr(s), repr(t))
[len(s), s[-1] > s[0], t.endswith('}')]
