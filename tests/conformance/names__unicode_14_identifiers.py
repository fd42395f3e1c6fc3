# Names with letters added in Unicode 11-14 (CPython 3.11 has Unicode 14.0):
# Georgian Mtavruli (11), U+A7BA (12), CJK extension G (13), Toto (14), and
# a Unicode 14 combining mark continuing a name.
ᲐᲑ = 1
ꞻ = ᲐᲑ + 1
𰀀 = [ꞻ, ᲐᲑ]
𞊐x᫁ = [v * 10 for v in 𰀀]
print(ᲐᲑ, ꞻ, f"{𰀀}{𞊐x᫁!r}")
{ꞻ: 𞊐x᫁}
