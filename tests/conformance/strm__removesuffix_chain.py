name = 'report.final.txt'
[name.removesuffix('.txt').removesuffix('.final'), name.removesuffix('.TXT'), ''.removesuffix('x'), 'x'.removesuffix('x')]
