# Valid escapes in every kind of literal piece: the validator's check of
# CPython's unicodeescape decoding must accept all of them.
x = 5
a = "é\x41\u00e9\U0001F600\N{BULLET}\101\d\
z"
b = f"{{\x41}}{x:\x3e4}é\N{LATIN SMALL LETTER A}{x!r}\u0041"
c = f"""{x}
\N{bullet}\t{x:{'>'}3}\\x4"""
d = r"\x4\N" + rf"{x}\u12"
print(a, b, c, d)
[a, b, c, d]
