# expect-difference: range has no methods in lackpy (DESIGN's method allowlist names none), so range.index/count are an AttributeError
r = range(0, 20, 3)
[r.index(9), r.count(6)]
